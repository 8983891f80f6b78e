/* placeholder, replaced by the component */
